#pragma once
/// Automatic mixed precision (torch.amp): autocast regions and the gradient scaler.
#include "ember/amp/autocast.h"
#include "ember/amp/grad_scaler.h"
