DROP TABLE crudforge_limits;
