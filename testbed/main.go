// Command gossiplab-node is the Go side of gossiplab's testbed backend. It has three
// subcommands:
//
//	gossiplab-node node CONFIG.json   one real go-libp2p-pubsub node (see node.go)
//	gossiplab-node delay CONFIG.json  the NFQUEUE delay stage of the core namespace
//	gossiplab-node version            the versions it was built with, as JSON
//
// The Python orchestrator (python/gossiplab/testbed) writes the configs, starts one node
// per network namespace and reads back what they write.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/gossiplab/gossiplab/testbed/gossipnode"
)

const usage = "usage: gossiplab-node node CONFIG.json | delay CONFIG.json | version"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "node", "delay":
		if len(os.Args) != 3 {
			fmt.Fprintln(os.Stderr, usage)
			os.Exit(2)
		}
		if os.Args[1] == "node" {
			err = runNode(os.Args[2])
		} else {
			err = runDelay(os.Args[2])
		}
	case "version":
		err = json.NewEncoder(os.Stdout).Encode(gossipnode.BuildVersions())
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gossiplab-node %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
