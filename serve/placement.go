package serve

import (
	"slices"
	"strconv"

	"github.com/batchd/batchd/ipc/wire"
)

// placement is where a request runs and how its prefix cache is salted:
// the channel it names or routing gives it, refused where a compliance
// rule binds one of its tags to another; in an isolated channel the salt
// is the user's (with the request's own cache_salt), else cache_salt.
func (svc *Service) placement(uid uint32, channel string, tags []string, promptTokens int, salt string) (string, string, error) {
	cfg := svc.live()
	if channel == "" {
		channel = cfg.Route(uid, tags, promptTokens)
	}
	for _, r := range cfg.Compliance {
		for _, t := range tags {
			if slices.Contains(r.Tags, t) && channel != r.Channel {
				return "", "", wire.Errorf(wire.CodeInvalidArgument, "channel %q: compliance rule %s puts tag %q on channel %s",
					channel, r.Name, t, r.Channel)
			}
		}
	}
	switch { // two prefixes, so that no cache_salt can name a user's chain
	case cfg.Channels[channel].Isolated:
		salt = "user:" + strconv.FormatUint(uint64(uid), 10) + "\x00" + salt
	case salt != "":
		salt = "request:" + salt
	}
	return channel, salt, nil
}
