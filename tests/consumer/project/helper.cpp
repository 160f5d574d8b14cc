// A library of the consumer's own, declared without a type: it follows the consumer's
// BUILD_SHARED_LIBS (unset: static), whatever Strata's own libraries are.
int consumer_helper() {
  return 1;
}
