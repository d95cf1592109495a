DROP TRIGGER users_enabled_again ON users;
DROP FUNCTION crudforge_enabled_again();
