package gossipnode

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// NodeKey derives node `index`'s Ed25519 identity from the scenario seed, so that every
// node knows its neighbours' peer ids before any of them starts, and a re-run of the
// same scenario gets the same ids (and so the same message ids and tie-breaks).
func NodeKey(seed uint64, index int) (crypto.PrivKey, peer.ID, error) {
	var material [8 + 4]byte
	binary.LittleEndian.PutUint64(material[:8], seed)
	binary.LittleEndian.PutUint32(material[8:], uint32(index))
	h := sha256.New()
	h.Write([]byte("gossiplab/node-key/v1"))
	h.Write(material[:])
	priv := ed25519.NewKeyFromSeed(h.Sum(nil))
	key, err := crypto.UnmarshalEd25519PrivateKey(priv)
	if err != nil {
		return nil, "", err
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, "", err
	}
	return key, id, nil
}
