DROP TABLE crudforge_events;
