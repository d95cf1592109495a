-- Undoes up.sql.
DROP TABLE fc_plain;
DROP TABLE fc_feed;
DROP TABLE fc_file;
