DROP TABLE crudforge_addresses;
DROP TABLE crudforge_mail_tokens;
