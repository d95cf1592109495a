DROP TABLE crudforge_schedules;
DROP TABLE crudforge_jobs;
