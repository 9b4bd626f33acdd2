package gossipnode

import "testing"

func TestNodeKeysAreDeterministicAndDistinct(t *testing.T) {
	_, a1, err := NodeKey(7, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, a2, _ := NodeKey(7, 0)
	_, b, _ := NodeKey(7, 1)
	_, c, _ := NodeKey(8, 0)
	if a1 != a2 {
		t.Fatal("same seed and index gave different peer ids")
	}
	if a1 == b || a1 == c {
		t.Fatal("different nodes or seeds share a peer id")
	}
	if len([]byte(a1)) != 38 {
		t.Fatalf("an Ed25519 peer id is 38 bytes, got %d", len([]byte(a1)))
	}
}

func TestPayloadCarriesTheMessageIndex(t *testing.T) {
	p := payload(0x01020304, 10)
	if len(p) != 10 || p[0] != 1 || p[3] != 4 {
		t.Fatalf("payload %v", p)
	}
	if len(payload(5, 2)) != 2 {
		t.Fatal("short payloads keep their size")
	}
}

func TestTopicNamesAreTwentyCharacters(t *testing.T) {
	if len(TopicName(0)) != 20 || len(TopicName(9999)) != 20 {
		t.Fatal("the model sizes RPCs with 20-character topics")
	}
}
