package gossipnode

import "testing"

func TestAppScoresNameTheListedNodesPeerIDs(t *testing.T) {
	params, _, err := scoreOptions(&ScoreConfig{
		AppSpecificWeight: 10,
		AppSpecific:       []AppScore{{Nodes: []int{0, 2}, Score: -100}, {Nodes: []int{3}, Score: 1.5}},
	}, 1, 42)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]float64{0: -100, 1: 0, 2: -100, 3: 1.5, 4: 0}
	for index, score := range want {
		_, id, err := NodeKey(42, index)
		if err != nil {
			t.Fatal(err)
		}
		if got := params.AppSpecificScore(id); got != score {
			t.Fatalf("node %d: app score %v, want %v", index, got, score)
		}
	}
	// Another seed gives other peer ids: none of them is listed.
	_, other, _ := NodeKey(43, 0)
	if got := params.AppSpecificScore(other); got != 0 {
		t.Fatalf("unlisted peer scored %v", got)
	}
}

func TestPeerExchangeAndDirectPeersBecomeOptions(t *testing.T) {
	if g := gossipParams(ProtocolConfig{PrunePeers: 3}); g.PrunePeers != 3 {
		t.Fatalf("PrunePeers %d", g.PrunePeers)
	}
	c := &Config{
		Seed: 9, Router: "gossipsub", Version: "1.1", Topics: 1,
		Protocol: ProtocolConfig{Signing: "strict-sign", MessageID: "go", PeerExchange: true},
		Direct:   []PeerConfig{{Index: 2, Addr: "/ip4/10.77.0.10/tcp/4001"}},
	}
	infos, err := directPeers(c)
	if err != nil {
		t.Fatal(err)
	}
	_, id, _ := NodeKey(9, 2)
	if len(infos) != 1 || infos[0].ID != id || infos[0].Addrs[0].String() != "/ip4/10.77.0.10/tcp/4001" {
		t.Fatalf("direct peers %v", infos)
	}
	plain, _ := PubsubOptions(&Config{Router: "gossipsub", Version: "1.1", Protocol: c.Protocol}, nil, nil)
	with, err := PubsubOptions(c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(with) != len(plain)+1 {
		t.Fatalf("%d options with a direct peer, %d without", len(with), len(plain))
	}
	floodsub := *c
	floodsub.Router = "floodsub"
	if _, err := PubsubOptions(&floodsub, nil, nil); err != nil {
		t.Fatalf("floodsub must not get gossipsub-only options: %v", err)
	}
}
