"""The sizes of money, prices, quantities and percentages, shared by every billing model."""

from decimal import Decimal

from django.core.validators import MaxValueValidator, MinValueValidator

MONEY = {"max_digits": 14, "decimal_places": 2}
PRICE = {"max_digits": 14, "decimal_places": 6}
QUANTITY = {"max_digits": 20, "decimal_places": 6}
PERCENT = {
    "max_digits": 5,
    "decimal_places": 2,
    "validators": [MinValueValidator(Decimal("0")), MaxValueValidator(Decimal("100"))],
}
