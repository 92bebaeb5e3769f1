# only self loops: no edges once they are dropped
0 0
2 2
