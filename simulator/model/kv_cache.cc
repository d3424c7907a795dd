// KV block pool: header-only (kv_cache.h); this unit keeps the one-file-per-concept layout.
#include "simulator/model/kv_cache.h"
