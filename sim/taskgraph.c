/* Task graph: filled in below. */
#include "engine.h"
