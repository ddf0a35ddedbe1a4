# Debian's Chromium: Playwright drives it (report rendering checks, the WebArena-Lite
# connector). Playwright's own browser download cannot work on machines without GitHub.
DEBIAN_PACKAGES+=(chromium)
