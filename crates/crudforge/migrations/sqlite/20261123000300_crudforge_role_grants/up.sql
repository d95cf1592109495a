-- One user holds a (role, domain) pair at most once; an unscoped grant counts as one domain.
DELETE FROM user_roles WHERE id NOT IN (
    SELECT MIN(id) FROM user_roles GROUP BY user_id, role, COALESCE(domain_id, '')
);
CREATE UNIQUE INDEX user_roles_grant_key ON user_roles (user_id, role, COALESCE(domain_id, ''));
