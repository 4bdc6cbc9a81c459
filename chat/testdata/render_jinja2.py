# Renders conversations as Hugging Face's apply_chat_template does (jinja2's
# sandbox, trim_blocks, lstrip_blocks, loopcontrols, tojson keeping non-ASCII),
# for TestRendersMatchJinja2. Reads {"template", "conversations", "bos", "eos"}
# on stdin (a conversation may carry template variables, "vars"); writes one {"rendered"} or {"error"} per conversation and prompt flag.
import datetime, json, sys
import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.ext import loopcontrols

def raise_exception(msg):
    raise jinja2.exceptions.TemplateError(msg)

def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = lambda fmt: datetime.date(2026, 12, 1).strftime(fmt)
req = json.load(sys.stdin)
t = env.from_string(req["template"])
out = []
for c in req["conversations"]:
    for agp in (True, False):
        try:
            out.append({"rendered": t.render(messages=c["messages"], add_generation_prompt=agp,
                                             bos_token=req["bos"], eos_token=req["eos"], tools=c.get("tools"), **c.get("vars", {}))})
        except Exception as e:
            out.append({"error": "%s: %s" % (type(e).__name__, e)})
json.dump(out, sys.stdout, ensure_ascii=False)
