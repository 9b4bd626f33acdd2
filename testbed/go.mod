module github.com/gossiplab/gossiplab/testbed

go 1.24
