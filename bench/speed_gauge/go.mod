module gossiplab/bench/speed_gauge

go 1.22
