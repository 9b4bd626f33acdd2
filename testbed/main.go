// Command gossiplab-node will run one real go-libp2p-pubsub node of a testbed
// experiment (see the testbed issue). For now it only states that it is not built yet,
// so that the module, its vet and its tests are already part of `make test`.
package main

import (
	"fmt"
	"os"
)

// notYet is the message every entry point gives until the testbed lands.
const notYet = "gossiplab-node: the testbed backend is not implemented yet; use backend = \"model\""

func main() {
	fmt.Fprintln(os.Stderr, notYet)
	os.Exit(2)
}
