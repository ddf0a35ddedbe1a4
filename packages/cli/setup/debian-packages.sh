# install_debian_packages LOG PACKAGE...: installs the Debian packages that are missing, as
# root; otherwise says which to install (with LOG, a function taking a message) and fails.
# Sourced by the repository's scripts/setup.sh and by setup/faiss-node.sh run on its own.
install_debian_packages() {
  local log="$1" package
  shift
  local missing=()
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    "$log" "missing Debian packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})"
    return 1
  fi
  "$log" "installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
