DROP TABLE clash_probe;
