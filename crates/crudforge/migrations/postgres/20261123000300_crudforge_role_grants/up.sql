-- One user holds a (role, domain) pair at most once; an unscoped grant counts as one domain.
DELETE FROM user_roles a USING user_roles b
    WHERE a.user_id = b.user_id AND a.role = b.role
      AND a.domain_id IS NOT DISTINCT FROM b.domain_id AND a.id > b.id;
CREATE UNIQUE INDEX user_roles_grant_key ON user_roles
    (user_id, role, COALESCE(domain_id, '00000000-0000-0000-0000-000000000000'::uuid));
