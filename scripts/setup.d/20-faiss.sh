# faiss-node: the native addon behind the replay buffer's vector search, compiled against
# Debian's libfaiss-dev with the DreamGym additions. The step lives in @dreamgym/cli, so that
# `dreamgym doctor --fix` runs the same script in any project (packages/cli/setup/faiss-node.sh).
# shellcheck source=../../packages/cli/setup/faiss-node.sh
source packages/cli/setup/faiss-node.sh
