DROP TABLE crudforge_webhook_deliveries;
DROP TABLE crudforge_webhooks;
DROP TABLE crudforge_event_readers;
