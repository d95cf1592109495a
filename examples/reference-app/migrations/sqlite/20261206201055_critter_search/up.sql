-- Written by crudforge's make-migrations from the mounted resources.

-- critters: search index over (name, species)
CREATE VIRTUAL TABLE critters__search USING fts5(name, species, content='critters', content_rowid='rowid', tokenize='unicode61 remove_diacritics 0');
CREATE TRIGGER critters__search_insert AFTER INSERT ON critters BEGIN
  INSERT INTO critters__search(rowid, name, species) VALUES (new.rowid, new.name, new.species);
END;
CREATE TRIGGER critters__search_delete AFTER DELETE ON critters BEGIN
  INSERT INTO critters__search(critters__search, rowid, name, species) VALUES ('delete', old.rowid, old.name, old.species);
END;
CREATE TRIGGER critters__search_update AFTER UPDATE OF name, species ON critters BEGIN
  INSERT INTO critters__search(critters__search, rowid, name, species) VALUES ('delete', old.rowid, old.name, old.species);
  INSERT INTO critters__search(rowid, name, species) VALUES (new.rowid, new.name, new.species);
END;
INSERT INTO critters__search(critters__search) VALUES ('rebuild');
