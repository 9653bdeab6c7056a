#!/usr/bin/env bash
# Re-create bench/own_docs/files/ from documentation installed on a Debian 12
# (bookworm) machine.  Nothing is downloaded: every file is either copied from
# /usr/share/doc, rendered from an installed man page or Python module, or
# converted locally (groff, pandoc, headless Chromium).
#
# Tools needed (Debian packages): man-db, groff (full, for -Tpdf), pandoc,
# chromium, poppler-utils (only for the text-layer check at the end), python3.
#   apt-get install -y groff pandoc chromium poppler-utils
#
# Source packages that must be installed for the inputs: coreutils, grep, tar,
# git-man, gzip, diffutils, openssh-client, base-files, bash, python3.11,
# zstd, systemd, python3-pip, man-db, apt, nodejs (its docs), libffi8,
# base-passwd, zlib1g-dev, python3-dev, time, bc, valgrind, libxslt1-dev,
# libtasn1-doc, shared-mime-info, ninja-build, bzip2-doc, fontconfig,
# libjpeg62-turbo-dev.  See SOURCES.md for the file-by-file origin.
#
# Byte-for-byte reproducibility: text, Markdown and HTML files are identical on
# a machine with the same package versions.  PDF and DOCX files carry tool
# metadata; SOURCE_DATE_EPOCH pins pandoc's and groff's dates, but Chromium
# prints the current date in its page header, so the Chromium PDFs differ in
# that header line only (the date/time, top left of every page).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
OUT="$HERE/files"
DOC=/usr/share/doc
export SOURCE_DATE_EPOCH=1735689600   # 2025-01-01T00:00:00Z
export LC_ALL=C.UTF-8
PY=/usr/bin/python3                    # Debian's python3 (3.11), not a pyenv one

rm -rf "$OUT"
mkdir -p "$OUT"/{text,markdown,html,pdf,docx}

# ---------------------------------------------------------------- text ----
# man pages rendered as plain, hard-wrapped text (80 columns, no pager)
for page in cp grep tar git-stash; do
    MANWIDTH=80 man -P cat "$page" > "$OUT/text/$page.txt"
done
# pydoc of two standard-library modules.  json's page prints the address of a
# default argument (0x...); running without address-space randomisation
# (setarch -R) keeps that address, and so the file, the same from run to run.
NOASLR=()
setarch "$(uname -m)" -R true 2>/dev/null && NOASLR=(setarch "$(uname -m)" -R)
for mod in json textwrap; do
    "${NOASLR[@]}" env MANPAGER=cat PAGER=cat "$PY" -m pydoc "$mod" > "$OUT/text/$mod.txt"
done
# plain READMEs
cp "$DOC/base-files/README" "$OUT/text/base-files-README.txt"
zcat "$DOC/coreutils/README.gz" > "$OUT/text/coreutils-README.txt"
zcat "$DOC/bash/README.gz" > "$OUT/text/bash-README.txt"

# ------------------------------------------------------------ markdown ----
zcat "$DOC/zstd/README.md.gz"            > "$OUT/markdown/zstd-README.md"
zcat "$DOC/systemd/UIDS-GIDS.md.gz"      > "$OUT/markdown/systemd-UIDS-GIDS.md"
zcat "$DOC/python3-pip/html/topics/dependency-resolution.md.gz" \
                                         > "$OUT/markdown/pip-dependency-resolution.md"
zcat "$DOC/man-db/README.md.gz"          > "$OUT/markdown/man-db-README.md"
zcat "$DOC/apt/README.md.gz"             > "$OUT/markdown/apt-README.md"
zcat "$DOC/libffi8/README.md.gz"         > "$OUT/markdown/libffi-README.md"
cp "$DOC/nodejs/api/path.md"             "$OUT/markdown/nodejs-path.md"
cp "$DOC/nodejs/contributing/writing-tests.md" "$OUT/markdown/nodejs-writing-tests.md"

# ---------------------------------------------------------------- html ----
cp "$DOC/base-passwd/users-and-groups.html"      "$OUT/html/users-and-groups.html"
cp "$DOC/zlib1g-dev/examples/zlib_how.html"      "$OUT/html/zlib_how.html"
cp "$DOC/python3/python-policy.html"             "$OUT/html/python-policy.html"
cp "$DOC/time/time.html"                         "$OUT/html/time.html"
cp "$DOC/bc/bc.html"                             "$OUT/html/bc.html"
cp "$DOC/valgrind/html/quick-start.html"         "$OUT/html/valgrind-quick-start.html"
cp "$DOC/libxslt1-dev/html/FAQ.html"             "$OUT/html/libxslt-FAQ.html"
cp "$DOC/xtrans-dev/xtrans.html"                 "$OUT/html/xtrans.html"

# ----------------------------------------------------------------- pdf ----
# the two real PDFs shipped by Debian packages
cp "$DOC/libtasn1-doc/libtasn1.pdf"                 "$OUT/pdf/libtasn1.pdf"
cp "$DOC/shared-mime-info/shared-mime-info-spec.pdf" "$OUT/pdf/shared-mime-info-spec.pdf"
# man pages typeset by groff (gropdf)
for page in ls gzip scp diff; do
    man -Tpdf "$page" > "$OUT/pdf/$page.pdf"
done
# HTML manuals printed by headless Chromium, with its default header/footer
chromium_pdf () {   # $1 = input html, $2 = output pdf
    local prof; prof="$(mktemp -d)"
    chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
        --user-data-dir="$prof" --print-to-pdf="$2" "file://$1" >/dev/null 2>&1
    rm -rf "$prof"
}
chromium_pdf "$DOC/valgrind/html/ms-manual.html"     "$OUT/pdf/valgrind-massif.pdf"
chromium_pdf "$DOC/libxslt1-dev/html/xsltproc.html"  "$OUT/pdf/xsltproc.pdf"

# ---------------------------------------------------------------- docx ----
pandoc "$DOC/ninja-build/manual.html"      -o "$OUT/docx/ninja-manual.docx"
pandoc "$DOC/bzip2/manual.html"            -o "$OUT/docx/bzip2-manual.docx"
pandoc "$DOC/valgrind/html/faq.html"       -o "$OUT/docx/valgrind-faq.docx"
pandoc "$DOC/fontconfig/fontconfig-user.html" -o "$OUT/docx/fontconfig-user.docx"
zcat "$DOC/libjpeg62-turbo-dev/README.md.gz" \
    | pandoc -f gfm -o "$OUT/docx/libjpeg-turbo-README.docx"
zcat "$DOC/systemd/ENVIRONMENT.md.gz" \
    | pandoc -f markdown -o "$OUT/docx/systemd-ENVIRONMENT.docx"
pandoc -f gfm "$DOC/nodejs/api/timers.md"  -o "$OUT/docx/nodejs-timers.docx"

# ---------------------------------------------------------------- check ----
for f in "$OUT"/pdf/*.pdf; do
    n=$(pdftotext "$f" - 2>/dev/null | wc -w)
    [ "$n" -gt 200 ] || { echo "no text layer: $f" >&2; exit 1; }
done
du -sh "$OUT"
find "$OUT" -type f | sort | xargs ls -l | awk '{print $5, $9}'
