DROP TABLE crudforge_history;
