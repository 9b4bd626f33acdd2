package simnet

import (
	"io"
	"testing"
	"time"

	"github.com/gossiplab/gossiplab/testbed/gossipnode"
)

func ns(d time.Duration) int64 { return int64(d) }

func nsp(d time.Duration) *int64 { v := int64(d); return &v }

// pairRun is a warm two-node line at 50 Mbit/s and 10 ms that publishes message m from
// node 0 at each of `at`, with the given faults; it returns node 1's delivery times.
func pairRun(t *testing.T, faults []Fault, loss []float64, at ...time.Duration) []int64 {
	t.Helper()
	cfg := testRun(2, []edge{{0, 1}}, 50_000_000, 10*time.Millisecond, ns(12*time.Second))
	for m, when := range at {
		cfg.Nodes[0].Schedule = append(cfg.Nodes[0].Schedule, gossipnode.Publication{Msg: uint32(m), TNs: ns(when), Size: 1000})
	}
	cfg.Faults = faults
	cfg.Network.Loss = loss
	out := t.TempDir()
	if _, err := runConfig(t, cfg, out, &progress{w: io.Discard}); err != nil {
		t.Fatal(err)
	}
	return deliveries(t, out, 1)
}

func TestPartitionHoldsPacketsUntilItHeals(t *testing.T) {
	heal := 6 * time.Second
	got := pairRun(t, []Fault{{Kind: "partition", Groups: [][]int{{0}, {1}}, FromNs: ns(4 * time.Second), UntilNs: nsp(heal)}}, nil, 5*time.Second)
	if len(got) != 1 || got[0] < ns(heal) {
		t.Fatalf("deliveries %v, want one after the partition heals at %v (QUIC retransmits)", got, heal)
	}
	never := pairRun(t, []Fault{{Kind: "partition", Groups: [][]int{{0}, {1}}, FromNs: ns(4 * time.Second)}}, nil, 5*time.Second)
	if len(never) != 0 {
		t.Fatalf("deliveries %v across a partition that never heals", never)
	}
}

func TestWholeLossDeliversNothingAndNoLossDeliversAtOnce(t *testing.T) {
	// Loss applies from the start, so the nodes never even connect.
	if got := pairRun(t, nil, []float64{0.5, 0.5}, 5*time.Second); len(got) != 0 {
		t.Fatalf("deliveries %v with every packet lost", got)
	}
	got := pairRun(t, nil, []float64{0, 0}, 5*time.Second)
	if len(got) != 1 || got[0] > ns(5*time.Second+50*time.Millisecond) {
		t.Fatalf("deliveries %v, want one about 10 ms after 5 s", got)
	}
}

func TestLeftNodeGetsNothingUntilItRejoins(t *testing.T) {
	leave := Fault{Kind: "leave", Node: 1, Topic: 0, AtNs: ns(3 * time.Second), RejoinNs: nsp(6 * time.Second)}
	got := pairRun(t, []Fault{leave}, nil, 5*time.Second, 9*time.Second)
	// The message published while it was away may still reach it by gossip once back.
	if len(got) == 0 || got[0] < ns(6*time.Second) || got[len(got)-1] < ns(9*time.Second) {
		t.Fatalf("deliveries %v, want none while left (3 s to 6 s) and the one published at 9 s", got)
	}
}

func TestCrashedNodeGetsNothingUntilItRestarts(t *testing.T) {
	crash := Fault{Kind: "crash", Node: 1, AtNs: ns(3 * time.Second), RestartNs: nsp(6 * time.Second)}
	got := pairRun(t, []Fault{crash}, nil, 5*time.Second, 9*time.Second)
	if len(got) == 0 || got[0] < ns(6*time.Second) || got[len(got)-1] < ns(9*time.Second) {
		t.Fatalf("deliveries %v, want none while down (3 s to 6 s) and the one published at 9 s", got)
	}
}
