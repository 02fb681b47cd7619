#include "loop/b.h"
#include "loop/a.h"
