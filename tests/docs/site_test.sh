#!/usr/bin/env bash
# site_test.sh — the user guide builds as a site with no warning (ctest docs_site):
#   1. `mkdocs build --strict` of mkdocs.yml (a link to a missing page or file fails it), and
#      no page of docs/ left out of the nav;
#   2. every link inside the built pages that names an anchor (`page.html#anchor`, `#anchor`)
#      finds an element with that id (mkdocs 1.4 checks files, not anchors);
#   3. every relative link of README.md and python/README.md (read on GitHub, not in the
#      site) names a file that exists, and an anchor its headings make (GitHub's slugs, which
#      mkdocs.yml gives the site too).
# Usage: site_test.sh SOURCE_DIR OUT_DIR. Exit 77 (SKIPPED) when mkdocs is not installed
# (scripts/install-deps.sh installs Debian's mkdocs and mkdocs-material).
set -euo pipefail
src="$(cd "${1:?usage: site_test.sh SOURCE_DIR OUT_DIR}" && pwd)"
out="${2:?usage: site_test.sh SOURCE_DIR OUT_DIR}"

if ! command -v mkdocs >/dev/null 2>&1; then
  echo "SKIP: mkdocs is not installed (apt-get install mkdocs mkdocs-material; scripts/install-deps.sh does)"
  exit 77
fi
# The Python that runs mkdocs has its Markdown extensions (pymdownx): the checks below use it.
py="$(sed -n '1s/^#! *//p' "$(command -v mkdocs)")"
[[ -x "${py%% *}" ]] || py=python3

mkdir -p "$out"
log="$out/mkdocs-build.log"
rc=0
mkdocs build --strict --clean -f "$src/mkdocs.yml" -d "$out/site" >"$log" 2>&1 || rc=$?
cat "$log"
if [[ $rc -ne 0 ]] || grep -qE 'WARNING +-' "$log"; then
  echo "FAIL: mkdocs build --strict failed or warned (exit $rc): see the WARNING lines above" >&2
  exit 1
fi
if grep -q 'not included in the "nav"' "$log"; then
  echo "FAIL: a page of docs/ is not in mkdocs.yml's nav (the INFO line above names it): add it" >&2
  exit 1
fi

"$py" - "$src" "$out/site" <<'EOF'
import html.parser, pathlib, re, sys, urllib.parse

src, site = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
problems = []

# 2. Anchors inside the built site.
class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.links, self.depth = set(), [], 0
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "article":
            self.depth += 1
        if tag == "a" and self.depth and a.get("href"):
            self.links.append(a["href"])
    def handle_endtag(self, tag):
        if tag == "article":
            self.depth -= 1

pages = {}
for f in site.rglob("*.html"):
    p = Page()
    p.feed(f.read_text(encoding="utf-8"))
    pages[f.resolve()] = p
checked = 0
for f, p in pages.items():
    for href in p.links:
        u = urllib.parse.urlsplit(href)
        if u.scheme or u.netloc or not u.fragment:
            continue
        target = f if not u.path else (f.parent / urllib.parse.unquote(u.path)).resolve()
        if target.suffix != ".html":
            continue
        checked += 1
        if target not in pages:
            problems.append(f"{f.relative_to(site.resolve())}: link {href}: no page {u.path}")
        elif urllib.parse.unquote(u.fragment) not in pages[target].ids:
            problems.append(f"{f.relative_to(site.resolve())}: link {href}: {target.name} has no anchor #{u.fragment}")

# 3. README.md and python/README.md, as GitHub reads them.
from pymdownx.slugs import slugify
slug = slugify(case="lower")
FENCE = re.compile(r"^\s*(```|~~~)")

def anchors(md):
    out, infence = set(), False
    for line in md.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            infence = not infence
        elif not infence and re.match(r"^#{1,6} ", line):
            out.add(slug(line.lstrip("#").strip(), "-"))
    return out

for readme in [src / "README.md", src / "python" / "README.md"]:
    text = readme.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for m in re.finditer(r"\]\(([^)\s]+)\)", text):
        href = m.group(1)
        u = urllib.parse.urlsplit(href)
        if u.scheme or u.netloc:
            continue
        target = readme if not u.path else (readme.parent / u.path).resolve()
        where = f"{readme.relative_to(src)}: link {href}"
        checked += 1
        if not target.exists():
            problems.append(f"{where}: no file {target}")
        elif u.fragment and target.suffix == ".md" and u.fragment not in anchors(target):
            problems.append(f"{where}: {target.relative_to(src)} has no heading for #{u.fragment}")

for p in problems:
    print("FAIL:", p, file=sys.stderr)
print(f"site_test: {len(pages)} pages, {checked} links with anchors or from the READMEs checked, "
      f"{len(problems)} broken")
sys.exit(1 if problems else 0)
EOF
