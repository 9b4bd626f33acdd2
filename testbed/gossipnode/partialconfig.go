package gossipnode

import "fmt"

// Partial-message roles of a node on every topic (pubsub.go RequestPartialMessages and
// SupportsPartialMessages; "none" enables no extension).
const (
	RoleRequests = "requests"
	RoleSupports = "supports"
	RoleNone     = "none"
)

// maxParts bounds P as the model does (a part set is a 128-bit word in the engine).
const maxParts = 128

// check refuses a partial config this node cannot run; nil (whole messages) is fine.
// The scenario was validated in Python; these are the Go side's own preconditions.
func (p *PartialConfig) check(c *Config) error {
	if p == nil {
		return nil
	}
	switch {
	case p.Parts < 1 || p.Parts > maxParts:
		return fmt.Errorf("partial.parts = %d: want 1..%d", p.Parts, maxParts)
	case p.PartSize < 0 || p.PartOverhead < 0 || p.FullOverhead < 0:
		return fmt.Errorf("partial: part_size, part_overhead and full_overhead must be >= 0")
	case p.GroupIDSize < 4:
		return fmt.Errorf("partial.group_id_size = %d: want >= 4 (the message index is written into it)", p.GroupIDSize)
	case p.Rule != "go-reference":
		return fmt.Errorf("partial.rule %q: only \"go-reference\" is implemented", p.Rule)
	case p.Role != RoleRequests && p.Role != RoleSupports && p.Role != RoleNone:
		return fmt.Errorf("partial.role %q: want requests, supports or none", p.Role)
	case p.Role != RoleNone && (c.Router != "gossipsub" || c.Version != "1.3"):
		return fmt.Errorf("partial.role %q needs gossipsub version 1.3 (the extensions control message), not %s %s", p.Role, c.Router, c.Version)
	case p.FullFallback && c.Protocol.MessageID != "ethereum":
		// Every node that completes a group publishes its full message: with go's
		// from+seqno ids each copy would be a different message.
		return fmt.Errorf("partial.full_fallback needs protocol.message_id = \"ethereum\" (content ids), not %q", c.Protocol.MessageID)
	}
	return nil
}
