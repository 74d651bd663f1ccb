// PLACEHOLDER (being written this session).
#include "runtime/docs_page.h"
