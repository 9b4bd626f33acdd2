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
