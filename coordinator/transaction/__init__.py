from .coordinator import TransactionCoordinator, TxnIO  # noqa: F401
from .state import TransactionMetadata, TxnState  # noqa: F401
