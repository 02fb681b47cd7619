#pragma once
#include "loop/b.h"
