DROP TABLE auth_failures;
