-- Replacing a dead node is a durable operation of a new kind.
ALTER TABLE operations DROP CONSTRAINT operations_kind_check;
ALTER TABLE operations ADD CONSTRAINT operations_kind_check
    CHECK (kind IN ('create', 'delete', 'scale', 'upgrade', 'replace-node',
                    'app-deploy', 'app-delete', 'addon-apply', 'addon-remove', 'backup', 'restore'));
