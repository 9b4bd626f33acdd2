module github.com/libp2p/go-buffer-pool

go 1.22
