package config

// Route picks the channel of a request that did not name one: its tags,
// then its prompt length, then its user's default, else standard.
func (c *Config) Route(uid uint32, tags []string, promptTokens int) string {
	r := c.Routing
	for _, t := range tags {
		if ch, ok := r.Tags[t]; ok {
			return ch
		}
	}
	if r.BulkPromptTokens > 0 && promptTokens >= r.BulkPromptTokens {
		return "bulk"
	}
	if ch, ok := c.Resolved().UserChannels[uid]; ok {
		return ch
	}
	return "standard"
}
