# three vertices: on four ranks the last owns none
0 1
1 2
2 0
