// The fake API server's label and field selectors: the parser and matcher live in
// controller/kube/selectors.h (the controller's external metrics API reads the HPA's selector with
// the same code); these aliases give the fake server's code and tests their own names for it.
#ifndef TWINSCALE_TESTS_FAKE_APISERVER_SELECTORS_H_
#define TWINSCALE_TESTS_FAKE_APISERVER_SELECTORS_H_

#include "controller/kube/selectors.h"

namespace twinscale::fake_apiserver {

using kube::FieldRequirement;
using kube::FieldSelector;
using kube::FieldValue;
using kube::LabelRequirement;
using kube::LabelSelector;

}  // namespace twinscale::fake_apiserver

#endif  // TWINSCALE_TESTS_FAKE_APISERVER_SELECTORS_H_
