DROP TRIGGER users_enabled_again;
