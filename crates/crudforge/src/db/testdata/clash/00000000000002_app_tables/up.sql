-- An application migration whose version is one of the library's own.
CREATE TABLE clash_probe (id INTEGER PRIMARY KEY);
