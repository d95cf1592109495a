DROP TABLE user_settings;
DROP TABLE tokens;
DROP TABLE user_roles;
DROP TABLE users;
DROP TABLE domains;
