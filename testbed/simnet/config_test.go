package simnet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The model's pair_latency: matrix[region[a]][region[b]] + added[a] + added[b].
func TestPairLatencyIsTheRegionMatrixPlusBothEndsAddedLatency(t *testing.T) {
	l := &LatencyConfig{
		Kind: "matrix", Region: []int{0, 1, 1},
		MatrixNs: [][]int64{{5, 70}, {80, 9}}, AddedNs: []int64{1000, 200, 30},
	}
	cases := []struct {
		a, b int
		want int64
	}{{0, 1, 70 + 1000 + 200}, {1, 0, 80 + 200 + 1000}, {1, 2, 9 + 200 + 30}, {2, 2, 9 + 30 + 30}}
	for _, c := range cases {
		if got := pairLatency(l, c.a, c.b); got != c.want {
			t.Errorf("latency %d -> %d = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	constant := &LatencyConfig{Kind: "constant", Ns: 25, AddedNs: []int64{1, 2}}
	if got := pairLatency(constant, 0, 1); got != 25+1+2 {
		t.Errorf("constant latency 0 -> 1 = %d, want 28", got)
	}
}

func TestBadRunConfigNamesTheField(t *testing.T) {
	cases := map[string]string{
		`{"nodes": []}`: "nodes is empty",
		`{"nodes": [{"index": 0, "topics": 1}], "network": {"upload_bps": [], "download_bps": [1], "latency": {"kind": "constant", "added_ns": [0]}}}`:                                            "network.upload_bps",
		`{"nodes": [{"index": 0, "topics": 1}], "network": {"upload_bps": [1], "download_bps": [1], "latency": {"kind": "ring", "added_ns": [0]}}}`:                                               "network.latency.kind",
		`{"nodes": [{"index": 0, "topics": 1}], "network": {"upload_bps": [1], "download_bps": [1], "latency": {"kind": "matrix", "region": [2], "matrix_ns": [[1]], "added_ns": [0]}}}`:          "network.latency.region[0]",
		`{"nodes": [{"index": 0, "topics": 1}], "network": {"upload_bps": [1], "download_bps": [1], "latency": {"kind": "constant", "added_ns": [0]}}, "faults": [{"kind": "crash", "node": 3}]}`: "faults[0].node",
	}
	for raw, field := range cases {
		path := filepath.Join(t.TempDir(), "RUN.json")
		if err := os.WriteFile(path, []byte(raw), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadRunConfig(path)
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: error %v does not name %s", raw, err, field)
		}
	}
}
