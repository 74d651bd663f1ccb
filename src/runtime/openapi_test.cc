// PLACEHOLDER (being written this session).
#include "runtime/openapi.h"
