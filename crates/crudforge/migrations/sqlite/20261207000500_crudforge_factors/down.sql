DROP TABLE crudforge_factor_grace;
DROP TABLE crudforge_recovery_codes;
DROP TABLE crudforge_factors;
