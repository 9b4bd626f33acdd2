package simnet

import (
	"os"
	"strings"
	"testing"
)

func TestPinnedVersionsMatchGoMod(t *testing.T) {
	raw, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for module, version := range pinnedVersions {
		if !strings.Contains(string(raw), "\t"+module+" "+version+"\n") &&
			!strings.Contains(string(raw), "\t"+module+" "+version+" ") {
			t.Errorf("go.mod does not pin %s at %s", module, version)
		}
	}
}

// The record names the buffer pool go.mod puts in go-buffer-pool's place.
func TestVersionsNameTheReplacedBufferPool(t *testing.T) {
	raw, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	want := "replace " + bufferPoolModule + " => ./bufpool\n"
	if !strings.Contains(string(raw), want) || versions()[bufferPoolModule] != "testbed/bufpool" {
		t.Errorf("go.mod lacks %q or versions() = %v", want, versions())
	}
}
