// Command gossiplab-node is the Go side of gossiplab's testbed backend. It has four
// subcommands:
//
//	gossiplab-node node CONFIG.json   one real go-libp2p-pubsub node (see node.go)
//	gossiplab-node delay CONFIG.json  the NFQUEUE delay stage of the core namespace
//	gossiplab-node version            the versions it was built with, as JSON
//	gossiplab-node speed SECONDS      the machine's speed once a second (speedgauge.go; 0: until killed)
//
// The Python orchestrator (python/gossiplab/testbed) writes the configs, starts one node
// per network namespace and reads back what they write.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/gossiplab/gossiplab/testbed/gossipnode"
)

const usage = "usage: gossiplab-node node CONFIG.json | delay CONFIG.json | version | speed SECONDS"

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
	case "speed":
		seconds, convErr := strconv.Atoi(argOr(2, ""))
		if convErr != nil || seconds < 0 {
			fmt.Fprintln(os.Stderr, usage)
			os.Exit(2)
		}
		runSpeedGauge(seconds)
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gossiplab-node %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// argOr is the i-th command-line argument, or `otherwise` when there are fewer.
func argOr(i int, otherwise string) string {
	if len(os.Args) > i {
		return os.Args[i]
	}
	return otherwise
}
