package simnet

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
)

// The runner's own flags, after the test flags (INTERFACE.md, "Binary").
var (
	configFlag = flag.String("config", "", "RUN.json of a simnet run (TestSimnet is skipped without it)")
	outFlag    = flag.String("out", "", "folder the run writes node-<i>/ and simnet.json into")
)

// SimnetFile is the run's own record, beside the node folders.
const SimnetFile = "simnet.json"

type simnetRecord struct {
	Versions map[string]string `json:"versions"`
	WallS    float64           `json:"wall_s"`
	CPUS     float64           `json:"cpu_s"` // user and system CPU time of the whole runner
	PeakRSS  int64             `json:"peak_rss_bytes"`
	// MemoryLimit is the collector's memory limit in force (GOMEMLIMIT, or setMemoryLimit's).
	MemoryLimit int64 `json:"memory_limit_bytes"`
	*Stats
}

// TestSimnet is the runner: every node of -config in one synctest bubble, output into
// -out. It is a test because synctest needs a *testing.T.
func TestSimnet(t *testing.T) {
	if *configFlag == "" {
		t.Skip("no -config: TestSimnet runs a RUN.json written by gossiplab")
	}
	if err := runFile(t, *configFlag, *outFlag, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "gossiplab-simnet: %v\n", err)
		os.Exit(1)
	}
}

// runFile runs a RUN.json into out and writes simnet.json.
func runFile(t *testing.T, config, out string, stdout *os.File) error {
	if out == "" {
		return fmt.Errorf("-out is missing: give the folder to write the run into")
	}
	cfg, err := ReadRunConfig(config)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	stats, err := runConfig(t, cfg, out, &progress{w: stdout})
	if err != nil {
		return err
	}
	return writeRecord(out, stats)
}

// runConfig runs cfg inside a synctest bubble; wall times are real seconds.
func runConfig(t *testing.T, cfg *RunConfig, out string, p *progress) (*simnetRecord, error) {
	began := wallSeconds()
	wall := func() float64 { return wallSeconds() - began }
	limit := setMemoryLimit()
	var stats *Stats
	var err error
	synctest.Test(t, func(*testing.T) {
		stats, err = Run(cfg, out, p, wall)
	})
	if err != nil {
		return nil, err
	}
	p.emit(map[string]any{"event": "done"})
	return &simnetRecord{Versions: versions(), WallS: wall(), CPUS: cpuSeconds(), PeakRSS: peakRSS(), MemoryLimit: limit, Stats: stats}, nil
}

func writeRecord(out string, rec *simnetRecord) error {
	raw, err := json.MarshalIndent(rec, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, SimnetFile), raw, 0o644)
}
