// Command gossiplab-forknode is one gossipsub v2.0 node of the fork the v2.0 study ran
// (ppopth/go-libp2p-pubsub@cfecb8a), for the testbed backend's real-code crosscheck of
// v2.0. It speaks the testbed node's protocol with the orchestrator (testbed/node.go):
//
//	gossiplab-forknode node CONFIG.json   one node in its network namespace
//	gossiplab-forknode version            the versions it was built with, as JSON
//
// and writes node.json and trace.ndjson in the shape the converter reads. See README.md.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
)

const usage = "usage: gossiplab-forknode node CONFIG.json | version"

// forkCommit is the fork's commit this node is meant to be built against (README.md).
const forkCommit = "cfecb8a5987715eb9f6c4dbfee2dc4a920944d7a"

func versions() map[string]string {
	v := map[string]string{"go": runtime.Version(), "github.com/libp2p/go-libp2p-pubsub": "ppopth fork " + forkCommit}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/libp2p/go-libp2p" {
				v[dep.Path] = dep.Version
			}
		}
	}
	return v
}

func main() {
	var err error
	switch {
	case len(os.Args) == 3 && os.Args[1] == "node":
		err = runNode(os.Args[2])
	case len(os.Args) == 2 && os.Args[1] == "version":
		err = json.NewEncoder(os.Stdout).Encode(versions())
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gossiplab-forknode: %v\n", err)
		os.Exit(1)
	}
}
