DROP TABLE crudforge_used_tickets;
DROP TABLE crudforge_identities;
