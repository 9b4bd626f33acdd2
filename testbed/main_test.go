package main

import (
	"strings"
	"testing"
)

func TestMessageNamesTheWorkingBackend(t *testing.T) {
	if !strings.Contains(notYet, `backend = "model"`) {
		t.Fatalf("placeholder message should point users to the model backend: %q", notYet)
	}
}
