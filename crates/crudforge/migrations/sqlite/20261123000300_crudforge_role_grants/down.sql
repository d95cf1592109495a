DROP INDEX user_roles_grant_key;
